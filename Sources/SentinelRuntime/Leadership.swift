import SentinelStore
import ServiceLifecycle
import Synchronization

/// Of a shared log, whether this replica leads: the one whose gauge makes the readings. Asked of the log (which tries
/// for the lead) at start and then once a second; until the first answer, it does not lead.
final class Leadership: Service, Sendable {
    let store: any EventLog
    private let state = Mutex(false)

    init(store: any EventLog) { self.store = store }

    var leading: Bool { state.withLock { $0 } }

    func run() async {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let leads = await store.leads()
            state.withLock { $0 = leads }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
        }
    }
}
