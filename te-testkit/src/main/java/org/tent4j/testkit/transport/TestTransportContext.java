package org.tent4j.testkit.transport;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;

import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.LocalMemory;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.platform.DevicePlatform;

/** A transport context without an engine, for transport tests. Close it to stop its threads. */
public final class TestTransportContext implements TransportContext, AutoCloseable {
    private final String segmentName;
    private final String machineId;
    private final OptionValues options;
    private final TestLocalMemory memory = new TestLocalMemory();
    private final ExecutorService workers = Executors.newFixedThreadPool(2, Thread.ofPlatform().daemon().name("test-worker-", 0).factory());
    private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("test-timer").factory());
    private final Duration timeout;
    private final InJvmControlPlane controlPlane;
    private volatile List<DevicePlatform> devicePlatforms = List.of();
    private volatile TimeSource clock = TimeSource.SYSTEM;

    /**
     * A context for one transport of one segment, with its own workers, scheduler and registrations.
     *
     * @param segmentName the segment's name; peers in this JVM reach it by this name over the in-JVM control plane
     * @param machineId   the machine id to report
     * @param transportId the transport's id, for its option keys
     * @param specs       the provider's option specs
     * @param options     option name to value, parsed against {@code specs}
     * @param timeout     the transfer timeout
     */
    public TestTransportContext(String segmentName, String machineId, String transportId, List<OptionSpec> specs,
                                Map<String, String> options, Duration timeout) {
        this.segmentName = segmentName;
        this.machineId = machineId;
        this.options = OptionValues.parse("transports." + transportId + ".", specs, options);
        this.timeout = timeout;
        this.controlPlane = new InJvmControlPlane(segmentName);
    }

    @Override public String segmentName() { return segmentName; }
    @Override public String host() { return "127.0.0.1"; }
    @Override public String machineId() { return machineId; }
    @Override public OptionValues options() { return options; }
    @Override public LocalMemory localMemory() { return memory; }
    @Override public ExecutorService workers() { return workers; }
    @Override public ScheduledExecutorService scheduler() { return scheduler; }
    @Override public Duration transferTimeout() { return timeout; }
    @Override public ControlPlane controlPlane() { return controlPlane; }
    @Override public List<DevicePlatform> devicePlatforms() { return devicePlatforms; }
    @Override public TimeSource clock() { return clock; }

    /**
     * Hands {@code platforms} to the transport as the engine's device platforms (none by default). The caller owns
     * them and closes them after the transport, as an engine does.
     *
     * @param platforms the platforms
     * @return this context
     */
    public TestTransportContext devicePlatforms(List<DevicePlatform> platforms) {
        this.devicePlatforms = List.copyOf(platforms);
        return this;
    }

    /**
     * Hands {@code clock} to the transport as the engine's clock (the system's by default), e.g. a ManualClock.
     *
     * @param clock the clock
     * @return this context
     */
    public TestTransportContext clock(TimeSource clock) {
        this.clock = clock;
        return this;
    }

    /**
     * The registrations the transport checks peers' accesses against.
     *
     * @return the memory
     */
    public TestLocalMemory memory() {
        return memory;
    }

    @Override
    public void close() {
        workers.shutdownNow();
        scheduler.shutdownNow();
        controlPlane.close();
    }
}
