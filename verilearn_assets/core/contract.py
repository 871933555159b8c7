"""The result of one gate rule: pure data, turned into an AssetCheckResult by the wiring."""

from __future__ import annotations

from pydantic import BaseModel, Field

MAX_LISTED = 20


class RuleOutcome(BaseModel):
    """Whether a rule passed, how many records it looked at, and each failure named."""

    rule: str
    checked: int
    failures: list[str] = Field(default_factory=list)
    stats: dict[str, float | int | str] = Field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        if self.passed:
            return f"{self.rule}: ok ({self.checked} checked)"
        shown = "; ".join(self.failures[:MAX_LISTED])
        more = len(self.failures) - MAX_LISTED
        tail = f"; … and {more} more" if more > 0 else ""
        return f"{self.rule}: {len(self.failures)} failure(s) of {self.checked}: {shown}{tail}"
