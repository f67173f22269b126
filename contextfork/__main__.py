from contextfork.entry import main

raise SystemExit(main())
