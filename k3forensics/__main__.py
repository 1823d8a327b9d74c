"""`python -m k3forensics`: the same command line as the `k3forensics` script."""

from k3forensics.cli import main

if __name__ == "__main__":
    main()
