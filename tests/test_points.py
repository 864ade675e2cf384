import pytest

from ci_tools.config.points import conc_ladder, search_space_concs


@pytest.mark.parametrize("start, end, step, expected", [
    (4, 64, 2, [4, 8, 16, 32, 64]),
    (4, 100, 2, [4, 8, 16, 32, 64, 100]),
    (1, 10, 3, [1, 3, 9, 10]),
    (4, 64, 4, [4, 16, 64]),
    (8, 8, 2, [8]),
    (9, 8, 2, []),
])
def test_conc_ladder(start, end, step, expected):
    assert conc_ladder(start, end, step) == expected


@pytest.mark.parametrize("ss, expected", [
    ({"conc-list": [16, 1, 16]}, [16, 1, 16]),
    ({"conc-list": [], "conc-start": 1, "conc-end": 4}, [1, 2, 4]),
    ({"conc-start": 1}, []),
])
def test_search_space_concs(ss, expected):
    assert search_space_concs(ss) == expected
