package org.tent4j.transport.tcp;

import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;

import org.tent4j.spi.ControlPlane;
import org.tent4j.spi.LocalMemory;
import org.tent4j.spi.OptionValues;
import org.tent4j.spi.SecuritySettings;
import org.tent4j.spi.TimeSource;
import org.tent4j.spi.TransportContext;

/** A test context with security settings, as an engine configured with {@code security.*} hands its transports. */
record SecuredContext(TransportContext base, SecuritySettings security) implements TransportContext {
    @Override public String segmentName() { return base.segmentName(); }
    @Override public String host() { return base.host(); }
    @Override public String machineId() { return base.machineId(); }
    @Override public OptionValues options() { return base.options(); }
    @Override public LocalMemory localMemory() { return base.localMemory(); }
    @Override public Executor workers() { return base.workers(); }
    @Override public ScheduledExecutorService scheduler() { return base.scheduler(); }
    @Override public ControlPlane controlPlane() { return base.controlPlane(); }
    @Override public Duration transferTimeout() { return base.transferTimeout(); }
    @Override public TimeSource clock() { return base.clock(); }
}
