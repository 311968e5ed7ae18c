from studies.common import positive_int
from studies.example_they import steps
from studies.pipeline import Study

STUDY = Study(
    name="example_they", title="Singular *they* after gendered and non-gendered names",
    summary="Worked example (docs/adding-a-study.md): singular they after gendered names",
    description="Worked example: does a gendered name (Aaron) make a language model choose "
                "singular they less than a non-gendered name (Alex) does?",
    add_flags=lambda parser: parser.add_argument(
        "--frames", type=positive_int, help="use the first N of the 40 sentence frames (default: all)"),
    load=steps.load, score=steps.score, fit=steps.fit, tables=steps.tables, report=steps.report,
)
main = STUDY.main
