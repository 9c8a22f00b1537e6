from attnsvm.run import main

main()
