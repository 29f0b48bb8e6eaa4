package org.tent4j.transport.tcp;

import java.util.List;

import org.tent4j.api.MemoryKind;
import org.tent4j.spi.Availability;
import org.tent4j.spi.OptionSpec;
import org.tent4j.spi.OptionSpec.Type;
import org.tent4j.spi.Transport;
import org.tent4j.spi.TransportCapabilities;
import org.tent4j.spi.TransportContext;
import org.tent4j.spi.TransportProvider;

/**
 * The tcp transport: host memory to host memory between any two engines that can reach each other over TCP. It is
 * the fallback every engine has, so it is always available and ranked after the fabric transports.
 */
public final class TcpTransportProvider implements TransportProvider {
    public static final String ID = "tcp";
    public static final long MAX_SLICE_SIZE = 64L << 20;

    private static final TransportCapabilities CAPABILITIES =
            TransportCapabilities.builder().maxSliceSize(MAX_SLICE_SIZE).rank(100)
                    .memoryPath(MemoryKind.CPU, MemoryKind.CPU)
                    .memoryPath(MemoryKind.CPU, MemoryKind.FILE) // remote file segments (issue 12): the target does the I/O
                    .build();

    private static final List<OptionSpec> OPTIONS = List.of(
            OptionSpec.of("lanes", Type.INT, 2, "persistent connections per peer, each a path of the runtime's "
                    + "scheduler; as many as io_threads keeps every I/O thread busy without two lanes sharing one"),
            OptionSpec.of("io_threads", Type.INT, 2, "Netty event loop threads for all tcp connections of the engine"),
            OptionSpec.of("port", Type.INT, 0, "data port to listen on; 0 picks a free port"),
            OptionSpec.of("io_mode", Type.STRING, "auto", "auto, epoll, io_uring or nio; auto = epoll if it loads, "
                    + "else nio"),
            OptionSpec.of("connect_timeout", Type.DURATION, "5s", "how long connecting to a peer may take"),
            OptionSpec.of("keepalive_idle", Type.DURATION, "15s", "TCP keep-alive of data connections, both sides: "
                    + "probe a peer after this long without traffic, so one that went silent (no reset) is noticed "
                    + "without a transfer; whole seconds, 0 = off"),
            OptionSpec.of("keepalive_interval", Type.DURATION, "5s", "time between keep-alive probes; whole seconds"),
            OptionSpec.of("keepalive_count", Type.INT, 3, "unanswered probes after which the connection closes; on "
                    + "epoll and io_uring, data unacknowledged for keepalive_idle + keepalive_interval x "
                    + "keepalive_count closes it too (TCP_USER_TIMEOUT)"),
            OptionSpec.of("interfaces", Type.STRING, "", "multi-rail tcp: the interfaces (names) or local addresses to "
                    + "listen on and connect from, comma separated, one rail each; * = every address of every "
                    + "non-loopback interface that is up; empty = control.host's address alone (one rail). "
                    + "control.host's address is always one of them. A peer tries each (local, remote) pair on one "
                    + "subnet and uses those that connect; list only addresses that reach this engine alone (a "
                    + "private address every host has, such as a container bridge's, would reach the peer's own host)"),
            OptionSpec.of("rail_connect_timeout", Type.DURATION, "1s", "once one rail to a peer connected, how much "
                    + "longer connecting waits for its other rails; those not connected by then are left out"),
            OptionSpec.of("rail_recheck", Type.DURATION, "5s", "how often a rail that did not connect is tried again "
                    + "in the background (and skipped by reconnects meanwhile); once its lanes connect, it joins the "
                    + "open connection to that peer as new paths, without reconnecting the other rails"),
            OptionSpec.of("max_frame", Type.SIZE, "64m", "largest slice a peer may request; a larger request is a "
                    + "protocol error that closes its connection"),
            OptionSpec.of("max_connections", Type.INT, 1024, "inbound data connections at most; more are closed at "
                    + "once (logged, counted)"),
            OptionSpec.of("idle_timeout", Type.DURATION, "10m", "close an inbound connection that sent nothing for "
                    + "this long and has no answer queued; its initiator reconnects when it needs it; 0 = never"),
            OptionSpec.of("max_queued_bytes", Type.SIZE, "16m", "answers queued for a peer that does not read them, "
                    + "each counted as at least 4k; past this the target stops reading that peer's requests"),
            OptionSpec.of("max_file_buffer_bytes", Type.SIZE, "256m", "buffers of peers' file requests (remote "
                    + "file segments) that all inbound connections hold at once; past this a connection with a file "
                    + "request stops reading until answers free some; at least max_frame"));

    @Override
    public String id() {
        return ID;
    }

    @Override
    public String description() {
        return "TCP over Netty, zero-copy into registered host memory; io_mode=auto uses " + IoMode.autoName();
    }

    @Override
    public Availability availability() {
        return Availability.available();
    }

    @Override
    public TransportCapabilities capabilities() {
        return CAPABILITIES;
    }

    @Override
    public List<OptionSpec> options() {
        return OPTIONS;
    }

    @Override
    public Transport create(TransportContext context) {
        return TcpTransport.start(context);
    }
}
