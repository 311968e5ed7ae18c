from studies.example_they.run import STUDY
STUDY.run_as_main()
