from ci_tools.cli import main

main()
