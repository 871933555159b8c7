"""The Dafny family's asset checks: its blocking gate rules, wired by the gate's factory."""

from verilearn_assets.dafny.family import FAMILY
from verilearn_assets.gate.adapter import blocking_checks

CHECKS = blocking_checks(FAMILY)
