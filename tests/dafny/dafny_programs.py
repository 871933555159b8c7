"""Small Dafny 2.3 programs the verifier tests use, one per result class."""

VERIFIED = """method Max(a: int, b: int) returns (m: int)
  ensures m >= a && m >= b
  ensures m == a || m == b
{
  if a > b { m := a; } else { m := b; }
}
"""
VERIFICATION_ERROR = """method Max(a: int, b: int) returns (m: int)
  ensures m >= a && m >= b
{
  m := a;
}
"""
PARSE_ERROR = "method M( {\n}\n"
RESOLUTION_ERROR = "method M() {\n  var x: int := true;\n}\n"
TIMEOUT = """lemma Fermat3(x: int, y: int, z: int)
  requires x > 0 && y > 0 && z > 0
  ensures x*x*x + y*y*y != z*z*z
{
}
"""


def many_loops(n: int) -> str:
    """A program with `n` verified loop methods: slow enough to kill mid-request."""
    out = []
    for k in range(n):
        out.append(
            f"""method Count{k}(n: nat) returns (c: nat)
  ensures c == n * {k + 1}
{{
  c := 0;
  var i := 0;
  while i < n
    invariant 0 <= i <= n && c == i * {k + 1}
  {{
    c := c + {k + 1};
    i := i + 1;
  }}
}}
"""
        )
    return "\n".join(out)
