import CoreMetrics
import Foundation
import Logging
import SentinelPrivacy
import SentinelStore
import ServiceLifecycle

/// Deletes what is past retention (by age, then the oldest beyond the size bound): at start and then by the clock,
/// beside the writing, so a closed showroom still forgets on time.
struct Retention: Service {
    let store: any EventLog
    let policy: RetentionPolicy
    let telemetry: Telemetry
    let logger: Logger

    func run() async {
        var job = RetentionJob(policy: policy)
        var target = store
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                if let run = try await job.runIfDue(now: Date(), on: &target), run.total > 0 {
                    telemetry.retainedByAge.increment(by: run.byAge)
                    telemetry.retainedBySize.increment(by: run.bySize)
                    logger.info(
                        "retention deleted old records",
                        metadata: ["byAge": "\(run.byAge)", "bySize": "\(run.bySize)"])
                }
            } catch {
                logger.error("retention failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(policy.intervalSeconds)) }
        }
    }
}
