import Foundation
import GRDB
public import SentinelCore
import SentinelPrivacy
import Synchronization

/// A database problem, said plainly: which file, and whether the disk is full, the file read-only, the database
/// locked by another process, owned by another Sentinel, or something else.
public struct StoreError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case diskFull, readOnly, locked, inUse, cannotOpen, corrupt, other
        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String
    public let underlying: (any Error)?

    package init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    init(_ error: any Error, path: String) {
        if let error = error as? StoreError {
            self = error
            return
        }
        underlying = error
        guard let error = error as? DatabaseError else {
            code = .other
            message = "database \(path): \(error)"
            return
        }
        switch error.resultCode {
        case .SQLITE_FULL:
            code = .diskFull
            message = "database \(path): the disk is full; events are kept in memory until space is freed"
        case .SQLITE_READONLY:
            code = .readOnly
            message = "database \(path) is read-only (check the file's and its folder's permissions)"
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            code = .locked
            message = "database \(path) is locked by another process or connection"
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH:
            code = .cannotOpen
            message =
                "database \(path) cannot be opened: \(error.message ?? "\(error.resultCode)") (does its folder exist and is it writable?)"
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            code = .corrupt
            message =
                "database \(path) is damaged or not a Sentinel database: \(error.message ?? "\(error.resultCode)")"
        default:
            code = .other
            message = "database \(path): \(error.message ?? "\(error.resultCode)")"
        }
    }

}
