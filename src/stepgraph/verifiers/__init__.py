"""Verifiers: reverse calculation, declared checks and unit checks after a run."""

from stepgraph.verifiers._reverse import TOLERANCE, close, reverse_calculate, reverse_convert
from stepgraph.verifiers._verify import check_verdict, verify

__all__ = ["TOLERANCE", "check_verdict", "close", "reverse_calculate", "reverse_convert", "verify"]
