"""What a hypothesis's Expected predicts for the time, read from its numbers, and whether it held.

Expected is free text, but the time is the one prediction every hypothesis makes and the
benchmark measures, so its numbers are read here, the first of these that Expected gives: a
factor against the version's base ("time drops about 2x against v1", "at least 1.5x"), a range
of medians ("from 513 us to about 370 us (330-430 us)"), a bound ("to under ~18000 us"), a
before and after ("from 135 us to about 127 us"), a halving, a percentage ("~20% faster",
"time drops 3-6%"). A factor wins over the numbers beside it, which often only illustrate it
with a guess at the base's time. A clause that names no time gives no prediction, and a factor
set against a baseline (eager, torch.compile, a library) is not one against the base. "Faster
beyond noise" alone would call a change that fell far short of its model a held prediction;
METHOD.md asks to find out why it fell short first.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_UNIT = r"(?:us|µs|μs|ms)"
_ABOUT = r"(?:about|around|roughly|approximately|approx\.?|~|≈)"
_AT_LEAST = r"(?:at\s+least|over|more\s+than|above|>=|≥|>)"
_TIME_WORDS = re.compile(r"\b(?:time|times|median|latency|duration|runtime|run\s*time|speed\s*-?\s*up|faster)\b|"
                         r"\d\s*" + _UNIT + r"\b", re.IGNORECASE)
# A factor followed by one of these is set against a baseline, not against the version's base.
_BASELINE = re.compile(r"^\s*(?:\)|,)?\s*(?:vs\.?|against|over|of|than|the)?\s*(?:eager|sdpa|cublas|cudnn|torch|"
                       r"pytorch|compile|library|libraries|vendor|baseline|flash|triton's|cutlass)", re.IGNORECASE)
_BASE_VERSION = re.compile(r"^\s*(?:(?:faster\s+than|vs\.?|against|over|relative\s+to|compared\s+with)\s+)?"
                           r"(v\d+)\b", re.IGNORECASE)

# A range of medians is read only where it is the value the time goes to ("to about 3100-3300 us",
# "to about 370 us (330-430 us)"): a range elsewhere may be a delta or one kernel's share.
_RANGE = re.compile(rf"\bto\s+{_ABOUT}?\s*(?:(?P<low>{_NUMBER})\s*(?:-|–)\s*(?P<high>{_NUMBER})\s*(?P<unit>{_UNIT})\b|"
                    rf"{_NUMBER}\s*{_UNIT}\s*\(\s*(?P<paren_low>{_NUMBER})\s*(?:-|–)\s*(?P<paren_high>{_NUMBER})\s*"
                    rf"(?P<paren_unit>{_UNIT})\s*\))|(?:{_ABOUT}\s*)?{_NUMBER}\s*{_UNIT}\s*\(\s*(?P<alone_low>{_NUMBER})\s*"
                    rf"(?:-|–)\s*(?P<alone_high>{_NUMBER})\s*(?P<alone_unit>{_UNIT})\s*\)", re.IGNORECASE)
_BOUND = re.compile(rf"\bto\s+(?:under|below|less\s+than|<)\s*~?\s*(?P<high>{_NUMBER})\s*(?P<unit>{_UNIT})\b",
                    re.IGNORECASE)
_FACTOR = re.compile(rf"(?:(?P<at_least>{_AT_LEAST})\s*|{_ABOUT}\s*)?~?\s*(?<![\dx×.\-–])"
                     rf"(?P<factor>\d+(?:\.\d+)?)\s*(?:[x×]\s*)?(?:(?:-|–|to)\s*~?\s*(?P<factor_high>\d+(?:\.\d+)?)\s*)?"
                     rf"[x×](?![\w\d×])", re.IGNORECASE)
_FROM_TO = re.compile(rf"\bfrom\s+{_ABOUT}?\s*(?P<before>{_NUMBER})\s*(?P<before_unit>{_UNIT})\s+to\s+{_ABOUT}?\s*"
                      rf"(?P<after>{_NUMBER})\s*(?P<after_unit>{_UNIT})\b", re.IGNORECASE)
_PERCENT = (r"(?:" + _ABOUT + r"\s*)?(?:(?P<percent_low>\d+(?:\.\d+)?)\s*%?\s*(?:-|–|to)\s*)?"
            r"(?P<percent>\d+(?:\.\d+)?)\s*%")
_PERCENT_FASTER = re.compile(rf"(?<![\d.]){_PERCENT}\s*faster\b", re.IGNORECASE)
_PERCENT_LESS = re.compile(rf"\b(?:time|median|latency|duration|runtime)(?:\s+[\w-]+){{0,3}}?\s+"
                           rf"(?:drops|falls|decreases|shrinks|goes\s+down)\s+(?:by\s+)?{_PERCENT}", re.IGNORECASE)
_HALVES = re.compile(r"\b(?:time|median|latency|duration|runtime)(?:\s+[\w-]+){0,3}?\s+(?:halves|is\s+halved)\b",
                     re.IGNORECASE)
_KERNEL = re.compile(r"kernel", re.IGNORECASE)
_WHOLE_CALL = re.compile(r"\b(?:median|forward|whole|end[\s-]*to[\s-]*end|per\s+call)\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r";|\.\s|,\s+(?:and\s+)?(?=[a-z])|\band\b", re.IGNORECASE)

# "About F" falls short where the measured gain is under two thirds of the predicted gain on a
# log scale and the time more than 5% over the predicted one (about 2x: under 1.587x; about 1.1x:
# under 1.045x, since a 6% gain against 10% is within what a model of a few percent can say); it
# goes past where the gain is over one and a half times the predicted one and the time 5% under
# (about 2x: past 2.83x; about 1.05x: past 1.1025x). "At least F" holds from F less the
# comparison's 2% bias.
ABOUT_HOLDS_FROM = 2 / 3
ABOUT_PAST_FROM = 1.5
ABOUT_TIME_MARGIN = 1.05
AT_LEAST_SLACK = 0.98


@dataclass(frozen=True)
class TimePrediction:
    """One prediction for the time: a range or bound on the median (µs), or a factor against the base."""

    quote: str  # the words of Expected it was read from
    low_us: float | None = None
    high_us: float | None = None
    factor: float | None = None  # the predicted speedup: the base's time / this version's (a range's low end)
    factor_high: float | None = None  # a range's high end ("1.5-2x")
    at_least: bool = False
    base: str | None = None  # the version Expected names as the base ("against v2"), where it names one

    def said(self) -> str:
        if self.factor is not None:
            high = f"-{self.factor_high:g}" if self.factor_high is not None else ""
            return f"{'at least' if self.at_least else 'about'} {self.factor:g}{high}x"
        if self.low_us is not None:
            return f"a median of {self.low_us:g}-{self.high_us:g} µs"
        return f"a median under {self.high_us:g} µs"


@dataclass(frozen=True)
class PredictionOutcome:
    """Whether the time prediction held: `held` ("held", "past it" or "short of it") and the sentence why."""

    held: str
    sentence: str


def read_time_prediction(expected: str | None) -> TimePrediction | None:
    """The first time prediction Expected makes with numbers, or None where it makes none."""
    if not expected:
        return None
    text = " ".join(expected.split())
    for match in _matches(_FACTOR, text):
        prediction = _factor_prediction(text, match)
        if prediction is not None:
            return prediction
    for match in _matches(_RANGE, text):
        prefix = next(name for name in ("", "paren_", "alone_") if match.group(f"{name}low"))
        unit = match.group(f"{prefix}unit")
        low, high = _micros(match.group(f"{prefix}low"), unit), _micros(match.group(f"{prefix}high"), unit)
        if 0 < low <= high:
            return TimePrediction(quote=_clause(text, match), low_us=low, high_us=high)
    for match in _matches(_BOUND, text):
        return TimePrediction(quote=_clause(text, match), high_us=_micros(match.group("high"), match.group("unit")))
    for match in _matches(_FROM_TO, text):
        before = _micros(match.group("before"), match.group("before_unit"))
        after = _micros(match.group("after"), match.group("after_unit"))
        if 0 < after < before:
            return TimePrediction(quote=_clause(text, match), factor=round(before / after, 3))
    for match in _matches(_HALVES, text):
        return TimePrediction(quote=_clause(text, match), factor=2.0)
    for pattern, faster in ((_PERCENT_FASTER, True), (_PERCENT_LESS, False)):
        for match in _matches(pattern, text):
            low = _percent_factor(match.group("percent_low"), faster)
            high = _percent_factor(match.group("percent"), faster)
            if high is not None:
                return TimePrediction(quote=_clause(text, match), factor=low or high,
                                      factor_high=high if low is not None and high > low else None)
    return None


def judge_time_prediction(prediction: TimePrediction, median_us: float | None, speedup: float | None,
                          compared_with: str | None) -> PredictionOutcome | None:
    """Set the prediction against the version's median and its interleaved speedup over `compared_with`.

    None where the records cannot answer it: no median, or a factor against another version than
    the one the benchmark compared with.
    """
    quoted = f'"{prediction.quote}"'
    if prediction.factor is None:
        if median_us is None:
            return None
        measured = f"median {median_us:.4g} µs"
        if prediction.low_us is None:
            held = "held" if median_us <= prediction.high_us else "short of it"
            side = "under" if held == "held" else "over"
            return PredictionOutcome(held, f"{measured}, {side} the {prediction.high_us:g} µs Expected gave ({quoted})")
        span = f"{prediction.low_us:g}-{prediction.high_us:g} µs"
        if median_us < prediction.low_us:
            return PredictionOutcome("past it", f"{measured}, under the {span} Expected gave ({quoted})")
        if median_us <= prediction.high_us:
            return PredictionOutcome("held", f"{measured}, inside the {span} Expected gave ({quoted})")
        return PredictionOutcome("short of it", f"{measured}, over the {span} Expected gave ({quoted})")
    if speedup is None or speedup <= 0 or (prediction.base and prediction.base != compared_with):
        return None
    measured = f"{speedup:.3f}x against {compared_with}"
    said = f"{measured} where Expected said {prediction.said()} ({quoted})"
    if prediction.at_least:
        held = "held" if speedup >= prediction.factor * AT_LEAST_SLACK else "short of it"
        return PredictionOutcome(held, said)
    if prediction.factor <= 1:
        return None
    high = prediction.factor_high or prediction.factor
    if math.log(speedup) > ABOUT_PAST_FROM * math.log(high) and speedup > high * ABOUT_TIME_MARGIN:
        return PredictionOutcome("past it", said)
    short = (math.log(speedup) < ABOUT_HOLDS_FROM * math.log(prediction.factor)
             and speedup * ABOUT_TIME_MARGIN < prediction.factor)
    return PredictionOutcome("short of it" if short else "held", said)


def _matches(pattern: re.Pattern, text: str):
    """The pattern's matches that speak of the whole call's time, not of one kernel's."""
    return (match for match in pattern.finditer(text) if not _one_kernels_time(text, match.start()))


def _one_kernels_time(text: str, position: int) -> bool:
    """Whether the sentence up to `position` is about one kernel ("rowdot_kernel's ... its duration falls"):
    the benchmark times the whole call, so such a time is not the one it can judge."""
    sentence = text[max(text.rfind(";", 0, position), text.rfind(". ", 0, position)) + 1:position]
    return bool(_KERNEL.search(sentence)) and not _WHOLE_CALL.search(sentence)


def _factor_prediction(text: str, match: re.Match) -> TimePrediction | None:
    factor = float(match.group("factor"))
    clause_start = _clause_start(text, match.start())
    if factor <= 0 or not _TIME_WORDS.search(text[clause_start:match.end()]):
        return None
    after = text[match.end():]
    if _BASELINE.match(after):
        return None
    base = _BASE_VERSION.match(after)
    high = float(match.group("factor_high")) if match.group("factor_high") else None
    return TimePrediction(quote=_clause(text, match), factor=factor, at_least=bool(match.group("at_least")),
                          factor_high=high if high is not None and high > factor else None,
                          base=base.group(1).lower() if base else None)


def _percent_factor(percent: str | None, faster: bool) -> float | None:
    """The speedup a percentage says: "20% faster" is 1.2x; "time drops 20%" is 1.25x."""
    if percent is None:
        return None
    share = float(percent) / 100
    if faster:
        return round(1 + share, 3) if share > 0 else None
    return round(1 / (1 - share), 3) if 0 < share < 1 else None


def _clause_start(text: str, position: int) -> int:
    start = 0
    for end in _CLAUSE_END.finditer(text, 0, position):
        start = end.end()
    return start


def _clause(text: str, match: re.Match) -> str:
    """The clause of Expected that holds the match, as the reader wrote it."""
    start = _clause_start(text, match.start())
    end = _CLAUSE_END.search(text, match.end())
    clause = text[start:end.start() if end else len(text)]
    while clause.count("(") > clause.count(")") and clause.rfind("(") >= match.end() - start:
        clause = clause[:clause.rfind("(")]  # an aside opened after the prediction and closed beyond the clause
    return clause.strip(" ,.;")


def _micros(number: str, unit: str | None) -> float:
    value = float(number.replace(",", ""))
    return value * 1000 if (unit or "").lower() == "ms" else value


_SAID_BY_OUTCOME = {
    "held": "held: {sentence}",
    "past it": "held, and went past it: {sentence}; the change did more than its model said: find out what, "
               "before building on it",
    "short of it": "fell short: {sentence}; faster beyond noise, but not by what the model said: find out why "
                   "(the profile's metrics against Expected's) before building on it",
}


def prediction_verdict(expected: str | None, median_us: float | None, speedup: float | None,
                       compared_with: str | None) -> str | None:
    """A faster version's answer to "did the expectation hold?" from Expected's numbers; None where it has none."""
    prediction = read_time_prediction(expected)
    if prediction is None:
        return None
    outcome = judge_time_prediction(prediction, median_us, speedup, compared_with)
    if outcome is None:
        return None
    return _SAID_BY_OUTCOME[outcome.held].format(sentence=outcome.sentence)
