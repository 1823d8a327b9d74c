"""Metrics as time series: selection, counter rates, histogram quantiles, live pull."""

from k3forensics.metrics.histogram import histogram_mean, histogram_quantile, quantiles_over_time
from k3forensics.metrics.rates import increase, rate, total_increase
from k3forensics.metrics.series import first_present, series

__all__ = [
    "first_present", "histogram_mean", "histogram_quantile", "increase", "quantiles_over_time", "rate", "series",
    "total_increase",
]
