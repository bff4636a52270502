"""The replay's normalisation: generated ids remapped one to one, timestamps masked."""

from __future__ import annotations

import json

from eog_core.replay import IdMap
from eog_core.replay._normalise import expand, mask_times


def test_an_id_that_differs_at_the_same_path_is_learnt_and_used_in_later_arguments() -> None:
    ids = IdMap()
    recorded = json.dumps({"content": [{"type": "text", "text": '{"sys_id": "case_007", "n": 1}'}]})
    replayed = json.dumps({"content": [{"type": "text", "text": '{"sys_id": "case_907", "n": 1}'}]})
    assert ids.compare(expand(recorded), expand(replayed)) == []
    assert ids.ids == {"case_007": "case_907"}
    assert ids.arguments('{"case_id": "case_007", "note": "see case_007"}') == (
        '{"case_id": "case_907", "note": "see case_907"}'
    )
    assert ids.arguments({"case_id": "case_0071"}) == {"case_id": "case_0071"}  # whole words
    untouched = '{"x":  1}'
    assert ids.arguments(untouched) is untouched  # as recorded, byte for byte


def test_what_is_not_an_id_of_the_same_shape_is_a_difference() -> None:
    ids = IdMap()
    assert ids.compare({"name": "Harbor Lane"}, {"name": "Harbor Road"}) != []
    assert ids.compare({"id": "case_007"}, {"id": "acct_907"}) != []  # another prefix
    assert ids.compare({"id": 7}, {"id": 9}) != []  # numbers are never remapped
    assert ids.compare({"a": 1}, {"a": 1.0}) != []  # JSON types count
    assert ids.ids == {}


def test_the_mapping_is_one_to_one() -> None:
    ids = IdMap()
    assert ids.compare(["case_007"], ["case_907"]) == []
    assert ids.compare(["case_007"], ["case_908"]) != []  # X maps to one id
    assert ids.compare(["case_008"], ["case_907"]) != []  # and one X to Y


def test_timestamps_are_masked_but_dates_are_data() -> None:
    assert mask_times("at 2026-12-04 13:06:06 and 2026-12-04T13:06:06.123+00:00") == (
        "at <time> and <time>"
    )
    ids = IdMap()
    assert ids.compare({"t": "2026-12-04 13:06:06"}, {"t": "2026-12-05 01:00:00"}) == []
    assert ids.compare({"d": "2027-06-30"}, {"d": "2027-07-31"}) != []
