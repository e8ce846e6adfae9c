"""``python -m grader`` is ``course-grader``."""
from .cli import main

raise SystemExit(main())
