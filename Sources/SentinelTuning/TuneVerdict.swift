/// What a sweep found: among the valid trials, the leader and, of those tied with it (within `noise`: the objective's
/// resolution, or what the file's settings move between two runs), the one nearest the file's own values; it is the
/// winner only if it beats the file's settings by more than the noise, else they stay.
public struct TuneVerdict: Sendable {
    public let leader: Sweep.Result
    /// The trial nearest the file's values among those tied with the leader.
    public let nearest: Sweep.Result
    /// Whether `nearest` beats the file's settings by more than the noise (always, when they have no objective).
    public let beaten: Bool
    /// Whether every trial scored within the noise of the leader: the labels cannot tell the settings apart.
    public let allTied: Bool

    /// The winner, if the file's settings were beaten.
    public var best: Sweep.Result? { beaten ? nearest : nil }

    /// `results` holds every trial; those without an objective are left out. Nil when none has one.
    public init?(
        _ results: [Sweep.Result], space: SearchSpace, fileObjective: Double?, noise: Double,
        fileValues: [String: String]
    ) {
        let objective = space.objective
        // Ties go to the earliest trial, whatever order a resumed sweep read them in.
        let valid = results.filter { $0.objective != nil }.sorted { $0.number < $1.number }
        guard let leader = valid.min(by: { objective.better($0.objective!, than: $1.objective!) }) else { return nil }
        beaten =
            fileObjective.map { file in
                objective.better(leader.objective! + (objective.maximised ? -noise : noise), than: file)
            } ?? true
        nearest = valid.filter { abs($0.objective! - leader.objective!) <= noise }.min {
            space.distance($0.settings, from: fileValues) < space.distance($1.settings, from: fileValues)
        }!
        let worst = valid.map { $0.objective! }.min(by: { objective.better($1, than: $0) })!
        allTied = abs(worst - leader.objective!) <= noise
        self.leader = leader
    }
}
