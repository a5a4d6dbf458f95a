import Foundation
import PostgresNIO
public import SentinelConfig

extension PostgresEventStore {
    /// The schema, a migration at a time, each applied once (recorded in `sentinel_migrations`): the SQLite store's
    /// tables with its constraints, and what many writers need besides (each origin once; the longest visit as a
    /// row every replica updates, where the SQLite store keeps it in memory).
    static let migrations: [(name: String, statements: [String])] = [
        (
            "v1",
            [
                """
                CREATE TABLE events (
                    id bigint PRIMARY KEY,
                    stream_id text NOT NULL,
                    sequence_number bigint NOT NULL,
                    type text NOT NULL,
                    time double precision NOT NULL,
                    zone text,
                    payload text NOT NULL,
                    origin_site text,
                    origin_id bigint,
                    UNIQUE (stream_id, sequence_number),
                    UNIQUE (origin_site, origin_id)
                )
                """,
                "CREATE SEQUENCE events_id_seq OWNED BY events.id",
                "CREATE INDEX events_time ON events (time)",
                "CREATE INDEX events_type ON events (type, id)",
                """
                CREATE TABLE visits (
                    face_id text PRIMARY KEY,
                    seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
                    source_id text NOT NULL,
                    state text NOT NULL,
                    zone text,
                    first_seen double precision NOT NULL,
                    last_seen double precision NOT NULL,
                    exit_reason text,
                    record text NOT NULL
                )
                """,
                "CREATE INDEX visits_first_seen ON visits (first_seen, seq)",
                "CREATE INDEX visits_last_seen ON visits (last_seen)",
                """
                CREATE TABLE zone_stays (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    face_id text NOT NULL REFERENCES visits (face_id) ON DELETE CASCADE,
                    zone text NOT NULL,
                    entered_at double precision NOT NULL,
                    exited_at double precision,
                    dwell_seconds double precision
                )
                """,
                "CREATE INDEX zone_stays_face ON zone_stays (face_id)",
                """
                CREATE TABLE gauge_readings (
                    event_id bigint PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
                    time double precision NOT NULL,
                    reading text NOT NULL
                )
                """,
                "CREATE INDEX gauge_readings_time ON gauge_readings (time)",
                "CREATE TABLE inbox (site text PRIMARY KEY, received bigint NOT NULL)",
                "CREATE TABLE visit_span (longest double precision NOT NULL)",
                "INSERT INTO visit_span VALUES (0)",
            ]
        ),
        (
            // The highest origin id of each site that retention deleted: below it, an origin is known though its
            // row is gone (a broker replaying a site's old messages must not store them again).
            "v2", ["ALTER TABLE inbox ADD COLUMN retired bigint NOT NULL DEFAULT 0"]
        ),
    ]

    /// Applies the migrations this database lacks, one replica at a time (an advisory lock), in one transaction, on a
    /// connection of its own (the pool has not started). A database migrated by a newer Sentinel is refused rather
    /// than written with an older idea of its tables.
    func migrate() async throws {
        let connection = try await connect()
        do {
            try await apply(on: connection)
            try await connection.close()
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// A connection of its own, once the server answers: a server that is not up yet (refused, unreachable) is
    /// asked again every 250 ms until the caller's timeout; one that answers with an error (a wrong password) is
    /// that error at once.
    private func connect() async throws -> PostgresConnection {
        while true {
            do {
                return try await PostgresConnection.connect(configuration: leadConnection, id: 1, logger: logger)
            } catch let error as PSQLError where error.serverInfo == nil && !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    private func apply(on connection: PostgresConnection) async throws {
        try await connection.withTransaction(logger: logger) { db in
            try await db.query("SELECT pg_advisory_xact_lock(\(Self.migrationLock))", logger: logger)
            try await db.query(
                "CREATE TABLE IF NOT EXISTS sentinel_migrations (name text PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())",
                logger: logger)
            var applied = Set<String>()
            for try await name in try await db.query("SELECT name FROM sentinel_migrations", logger: logger)
                .decode(String.self)
            {
                applied.insert(name)
            }
            let known = Set(Self.migrations.map(\.name))
            if let unknown = applied.subtracting(known).sorted().first {
                throw StoreError(
                    .other,
                    "database \(location) was migrated by a newer Sentinel (migration \"\(unknown)\"): run that version"
                )
            }
            for migration in Self.migrations where !applied.contains(migration.name) {
                for statement in migration.statements {
                    try await db.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await db.query("INSERT INTO sentinel_migrations (name) VALUES (\(migration.name))", logger: logger)
                logger.notice(
                    "migrated the database", metadata: ["database": "\(location)", "migration": "\(migration.name)"])
            }
        }
    }
}

extension DatabaseServer {
    /// The password, from `passwordFile` or the environment (nil: none, as for `trust` or `peer` authentication); a
    /// file that cannot be read, or whose first line is empty, is an error that names it.
    public func password() throws(StoreError) -> String? {
        if let passwordFile {
            guard let data = FileManager.default.contents(atPath: passwordFile) else {
                throw StoreError(.cannotOpen, "cannot read the password file \(passwordFile)")
            }
            guard let line = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first else {
                throw StoreError(.cannotOpen, "the password file \(passwordFile) must hold one line, the password")
            }
            return String(line)
        }
        return ProcessInfo.processInfo.environment[passwordEnvironment]
    }
}
