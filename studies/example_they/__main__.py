from studies.example_they.run import main

raise SystemExit(main())
