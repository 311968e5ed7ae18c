from studies.pronoun_memory.run import STUDY

STUDY.run_as_main()
