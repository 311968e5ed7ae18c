from studies.pronoun_fidelity.run import STUDY
STUDY.run_as_main()
