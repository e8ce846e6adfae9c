"""Results: what grading leaves behind and what is made of it. In: graded outcomes, written to the
gradebook and markers (:mod:`.gradebook`, the only writer: grades, comments, due dates, penalties; the
assignment, notebook and cell rows are nbgrader's ``generate_assignment``'s, called only by
``authoring.assembly.release``). Out: the grade table, feedback pages, the CSV export, the class report,
the similarity check and feedback released into nbgrader's exchange (:mod:`.feedback_release`); none of
them changes a grade.
"""
