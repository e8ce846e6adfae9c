"""Reasons are one readable sentence, whatever the exception's message looks like."""
from grader.engine.grade import _first_line


def test_an_empty_exception_message_leaves_no_dangling_colon():
    assert _first_line("NotImplementedError: ") == "NotImplementedError"
    assert _first_line("NotImplementedError:") == "NotImplementedError"


def test_only_the_first_line_is_kept_and_long_lines_are_cut():
    assert _first_line("AssertionError: shapes differ\nTraceback ...") == "AssertionError: shapes differ"
    assert _first_line("x" * 500, limit=20) == "x" * 17 + "..."


def test_no_message_at_all_reads_as_an_error():
    assert _first_line("") == "an error"
    assert _first_line(None) == "an error"
