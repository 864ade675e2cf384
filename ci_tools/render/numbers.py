"""Numbers as people write them in messages and tables: counts with thousands separators (never
`1.20102e+10` or `196999`), p-values that never read `p=0`. The one place these formats live."""

from __future__ import annotations

import math

P_FLOOR = 1e-4


def count(x: float) -> str:
    """A count (requests, tokens): `12,010,200,000`; a fractional one keeps one decimal."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:,.1f}"


def p_value(p: float) -> str:
    """`p<0.0001` below the floor (a test never gives p = 0), else two significant digits: `p=0.0014`."""
    if p < P_FLOOR:
        return f"p<{P_FLOOR:g}"
    return f"p={float(f'{p:.2g}'):g}"
