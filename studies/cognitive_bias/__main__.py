from studies.cognitive_bias.run import STUDY
STUDY.run_as_main()
