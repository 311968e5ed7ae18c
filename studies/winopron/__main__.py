from studies.winopron.run import STUDY
STUDY.run_as_main()
