"""What to do next, by the decision rules of the seed documents.

Environment mismatch → rebuild the environment. Load-time OOM on a sound environment →
topology / capacity (scale), never concurrency. Runtime OOM → tune one parameter at a time
on the same request set (which one follows from the subclass), then scale.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from k3forensics.library.loader import Library
from k3forensics.triage.oom import OomVerdict

RUNTIME_PARAMETER = {
    "long_context": ("--max-model-len", "one long request did not fit: cap the context length, re-send the same "
                     "request set, then decide whether the business needs the longer context (scale)"),
    "concurrency": ("--max-num-seqs", "many requests shared the KV cache: lower concurrency, re-measure peak "
                    "memory on the same request set, keep prefix caching on"),
    "sustained": ("--gpu-memory-utilization", "memory ran out after long serving: leave more headroom and check "
                  "prefix-cache retention before adding GPUs"),
}


@dataclass(frozen=True)
class NextStep:
    action: str
    text: str
    parameter: str | None = None
    why: str | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def decide(first: dict[str, object] | None, oom: OomVerdict, library: Library,
           environment_problems: list[str]) -> NextStep:
    if first is None:
        return NextStep("none", "nothing failed in this bundle")
    sig = library.signatures.get(str(first["signature"]))
    remediation = sig.remediation if sig else None
    if environment_problems and oom.oom_class in ("load_time", "secondary", "none"):
        return NextStep("rebuild_environment",
                        "the environment deviates from the baseline; fix that before tuning anything",
                        why="; ".join(environment_problems[:3]))
    if oom.oom_class == "runtime":
        parameter, text = RUNTIME_PARAMETER.get(oom.subclass or "", (None, "tune one parameter at a time on the "
                                                "same request set (context length, concurrency, prefix caching), "
                                                "then scale if the headroom is still gone"))
        return NextStep("tune", text, parameter, why=f"runtime OOM ({oom.subclass or 'subclass unknown'})")
    if oom.oom_class == "load_time":
        return NextStep("scale", remediation.text if remediation and remediation.action.value == "scale" else
                        "the model does not fit this topology: check driver, image and GPU topology first, then "
                        "add GPUs / nodes or change the parallel layout; lowering concurrency will not help",
                        remediation.parameter if remediation else None, why=f"load-time OOM ({oom.subclass})")
    if remediation:
        return NextStep(remediation.action.value, remediation.text, remediation.parameter,
                        why=f"{first['category']} ({first['signature']})")
    return NextStep("investigate", "no remediation is recorded for this signature", why=str(first["signature"]))
