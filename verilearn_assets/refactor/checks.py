"""The refactor family's blocking checks, built from its pure rules by the gate's factory."""

from verilearn_assets.gate.adapter import blocking_checks
from verilearn_assets.refactor.family import FAMILY

CHECKS = blocking_checks(FAMILY)
