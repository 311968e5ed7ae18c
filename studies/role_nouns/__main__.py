from studies.role_nouns.run import STUDY
STUDY.run_as_main()
