from studies.genda_lens.run import STUDY
STUDY.run_as_main()
