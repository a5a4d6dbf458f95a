import CSentinelCV
public import SentinelCore

/// An error from the vision layer: what went wrong, in words that name the file, device or URL.
///
/// Messages carry paths, sizes and OpenCV's own text; never pixels or identities.
public struct VisionError: SentinelError, Equatable {
    /// What kind of failure this is, for code that reacts to it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case argument, open, model, refusedOutput, emptyFrame, processing, write, unknown }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A caller passed something unusable (bad size, empty box).
        public static let argument = Code(.argument)
        /// A file, device or URL could not be opened.
        public static let open = Code(.open)
        /// A model file is missing or could not be loaded.
        public static let model = Code(.model)
        /// A model's output for one input that is no reading (not a number, out of range): that reading is refused.
        public static let refusedOutput = Code(.refusedOutput)
        /// An empty (0x0) frame where pixels were needed.
        public static let emptyFrame = Code(.emptyFrame)
        /// OpenCV failed while processing.
        public static let processing = Code(.processing)
        /// An output could not be written.
        public static let write = Code(.write)
        public static let unknown = Code(.unknown)

        public var description: String { base.rawValue }

        init(_ status: snl_status) {
            switch status {
            case SNL_ERR_ARGUMENT: self = .argument
            case SNL_ERR_OPEN: self = .open
            case SNL_ERR_MODEL: self = .model
            case SNL_ERR_EMPTY: self = .emptyFrame
            case SNL_ERR_OPENCV: self = .processing
            case SNL_ERR_WRITE: self = .write
            default: self = .unknown
            }
        }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

}

/// Calls a bridge function with a fresh error buffer and throws its message when it fails.
@discardableResult
func bridge(_ call: (UnsafeMutablePointer<snl_error>) -> snl_status) throws(VisionError) -> snl_status {
    var error = snl_error()
    let status = call(&error)
    guard status == SNL_OK else {
        let message = withUnsafeBytes(of: &error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        throw VisionError(VisionError.Code(status), message)
    }
    return status
}
