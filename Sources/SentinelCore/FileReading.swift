public import Foundation

extension FileHandle {
    /// Up to `count` bytes from the current offset: fewer near the end of the file, none at it (where Foundation
    /// answers nil). A read that fails throws.
    public func bytes(upTo count: Int) throws -> Data {
        guard let data = try read(upToCount: count) else { return Data() }
        return data
    }
}
