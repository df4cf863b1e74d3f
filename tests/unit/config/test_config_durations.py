import pytest

from harness.config import parse_duration


def test_a_duration_in_milliseconds_parses():
    assert parse_duration("500ms") == pytest.approx(0.5)


def test_durations_in_seconds_minutes_hours_and_days_parse():
    assert parse_duration("30s") == 30.0
    assert parse_duration("5m") == 300.0
    assert parse_duration("1h") == 3600.0
    assert parse_duration("7d") == 7 * 86400.0


def test_a_fractional_duration_parses():
    assert parse_duration("1.5s") == 1.5


def test_zero_is_a_duration():
    assert parse_duration("0s") == 0.0


@pytest.mark.parametrize(
    "text", ["30", "", "-5s", "s", "5 s", " 5s", "5sec", "1.s", ".5s", "1h30m", "5S", "nan s"]
)
def test_a_malformed_duration_is_refused(text):
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


def test_a_duration_past_100_years_is_refused_with_the_maximum_and_100_years_is_accepted():
    assert parse_duration("36500d") == 36500 * 86400.0
    for text in ("36501d", "99999999999d", "9" * 400 + "ms"):
        with pytest.raises(
            ValueError, match=r"longer than the longest duration accepted, 36500d \(100 years\)"
        ):
            parse_duration(text)
