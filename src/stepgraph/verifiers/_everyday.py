"""Which units a word after a number in running text may name: the everyday ones only.

pint knows thousands of units, and many are English words or word endings: "12 are
automatic" would be 12 ares (1,200 m²), "the 3rd floor" 3 rods, "4th of July" 4 thou,
"9 candles" 9 candela, "5 kilos" 5 kiloseconds, "3 pm" 3 picometres. A goal read that
way hands the model an input no step can add to a count, and the plan is refused for the
engine's misreading. So a word is read as a unit only where each of its parts is one of
the units people write in questions, with the prefixes people put on it.
"""

from __future__ import annotations

import pint

from stepgraph.units._registry import registry

_DATA_PREFIXES = frozenset(
    {"", "kilo", "mega", "giga", "tera", "peta", "kibi", "mebi", "gibi", "tebi", "pebi"}
)
_POWER_PREFIXES = frozenset({"", "kilo", "mega", "giga"})
_PREFIXES: dict[str, frozenset[str]] = {
    "meter": frozenset({"", "milli", "centi", "kilo"}),
    "gram": frozenset({"", "milli", "micro", "kilo"}),
    "liter": frozenset({"", "milli", "centi", "deci"}),
    "second": frozenset({"", "milli", "micro", "nano"}),
    "bit": _DATA_PREFIXES,
    "byte": _DATA_PREFIXES,
    "bps": _DATA_PREFIXES,
    "watt": _POWER_PREFIXES,
    "watt_hour": _POWER_PREFIXES,
    "joule": _POWER_PREFIXES,
    "calorie": _POWER_PREFIXES,
    "hertz": _POWER_PREFIXES,
    "volt": frozenset({"", "milli", "kilo"}),
    "ampere": frozenset({"", "milli"}),
}
_UNPREFIXED = frozenset(
    {
        *("minute", "hour", "day", "week", "fortnight", "month", "year", "decade", "century"),
        *("inch", "foot", "yard", "mile", "nautical_mile", "mile_per_hour", "knot"),
        *("pound", "ounce", "ton", "tonne", "metric_ton"),
        *("gallon", "quart", "pint", "cup", "tablespoon", "teaspoon", "fluid_ounce"),
        *("acre", "hectare", "kilowatt_hour", "kilocalorie", "percent"),
        *("kbps", "Mbps", "Gbps", "Tbps", "baud", "KB", "Kb", "Kbps", "Kbit", "wk"),
        *("degree_Celsius", "degree_Fahrenheit", "kelvin"),
        *("dollar", "cent", "euro", "pound_sterling"),
    }
)


def is_everyday(unit: pint.Unit) -> bool:
    """Whether every part of `unit` is a unit people write, with a prefix they put on it."""
    ureg = registry()
    for name in unit._units:
        candidates = ureg.parse_unit_name(str(name))
        if not candidates:
            return False
        prefix, base, _suffix = candidates[0]
        if base in _UNPREFIXED and prefix == "":
            continue
        if prefix not in _PREFIXES.get(base, frozenset()):
            return False
    return True
