import ArgumentParser
struct Eval: ParsableCommand { func run() throws {} }
