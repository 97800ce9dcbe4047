"""The Search-R1 action protocol: one ``<search> query </search>`` or one ``<answer> … </answer>``.

Both the raw env and the agent-level parser use ``parse_command``, so "valid" means the same thing
at both layers. Text outside the tag (a ``<think>`` block, stray words) is ignored; what makes an
action invalid is the tag structure: neither tag, both tags, a tag repeated, an unclosed or
unopened tag, or an empty tag.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TAGS = ("search", "answer")
MAX_QUERY_CHARS = 1000  # longer queries are cut: they only slow retrieval down
_BLOCK = {t: re.compile(rf"<{t}>(.*?)</{t}>", re.DOTALL) for t in TAGS}


@dataclass(frozen=True)
class Command:
    kind: str | None  # "search" | "answer" | None when invalid
    content: str = ""
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.kind is not None

    def render(self) -> str:
        """The canonical action text, ``<kind> content </kind>``."""
        return f"<{self.kind}> {self.content} </{self.kind}>"


def parse_command(text: object) -> Command:
    """Parse one action; never raises. See the module docstring for the rules."""
    if not isinstance(text, str):
        return Command(None, error="the action must be text")
    counts = {t: (text.count(f"<{t}>"), text.count(f"</{t}>")) for t in TAGS}
    used = [t for t in TAGS if any(counts[t])]
    if not used:
        return Command(None, error="no <search> or <answer> tag found")
    if len(used) == 2:
        return Command(None, error="use either <search> or <answer>, not both")
    kind = used[0]
    opens, closes = counts[kind]
    if opens > 1 or closes > 1:
        return Command(None, error=f"<{kind}> appears more than once; give exactly one")
    match = _BLOCK[kind].search(text)
    if opens != 1 or closes != 1 or match is None:
        return Command(None, error=f"malformed <{kind}> tag: write <{kind}> ... </{kind}>")
    content = " ".join(match.group(1).split())
    if not content:
        return Command(None, error=f"empty <{kind}> tag")
    if kind == "search":
        content = content[:MAX_QUERY_CHARS]
    return Command(kind, content)
