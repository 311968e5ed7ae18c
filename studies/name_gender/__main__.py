from studies.name_gender.run import STUDY

STUDY.run_as_main()
