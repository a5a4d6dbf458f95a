import ArgumentParser
struct Synth: ParsableCommand { func run() throws {} }
