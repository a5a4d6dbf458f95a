public import SentinelWire

extension Emotion {
    /// How the gauge reads each expression, -1 (negative) to 1 (positive): a labelled face's valence when emotion is
    /// measured, and the table a calibration's own valences are fitted from.
    public var valence: Double {
        switch self {
        case .happy: 1
        case .surprise: 0.5
        case .neutral: 0
        case .sad, .fear: -0.75
        case .angry, .disgust: -1
        }
    }
}
