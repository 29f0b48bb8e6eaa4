package org.tent4j.store.rpc;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.netty.NettyServerBuilder;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.tent4j.store.StoreClock;
import org.tent4j.store.StoreSecurity;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.StoreMaster;

/** A master serving its RPCs (and housekeeping) in this process; `tent4j store master` runs one on its own. */
public final class MasterServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MasterServer.class);
    /** Largest RPC message accepted: bounds what one peer can make the master buffer. */
    public static final int MAX_MESSAGE_BYTES = 64 << 20;
    /**
     * Threads of the slow-work pool (sweeps, mounts, large batches) and the calls that may wait for one: any caller
     * can send slow calls, and an unbounded pool grew to a thread per call (1,527 threads for 1,500 queued regex
     * removals). Beyond both the call is refused at once ({@code UNAVAILABLE_IN_CURRENT_STATUS}).
     */
    public static final int SLOW_WORK_THREADS = 4;
    public static final int SLOW_WORK_QUEUE = 64;

    /**
     * HTTP/2 flow-control window of each stream (and the connection), fixed: gRPC's default grows it with the measured
     * bandwidth-delay product up to 8 MiB, and a stream whose handler has not asked for its next message (a Calls
     * stream whose client reads no answers) holds up to a window outside the {@link InboundBudget}. The master's
     * messages are small and its clients near, so 64 KiB (about HTTP/2's own default) costs honest calls nothing.
     */
    public static final int FLOW_CONTROL_WINDOW = 64 << 10;

    /**
     * What peers can make the master hold: connections (all of them, or with a token or TLS those that proved
     * themselves), connections that have not yet carried an authenticated call (their own slots, the oldest closed
     * when full: see {@link ConnectionGate}), concurrent calls per connection (HTTP/2 streams; a client needs one
     * stream for its calls plus a few unary ones), and bytes of messages received in part and not yet handed to a
     * handler, all connections together ({@link InboundBudget}: a message that would go beyond is refused
     * {@code RESOURCE_EXHAUSTED}).
     */
    public record Limits(int maxConnections, int unprovenConnections, int callsPerConnection, long inboundBytesBudget) {
        public static final Limits DEFAULT = new Limits(1024, 64, 16, 256L << 20);

        public Limits {
            if (maxConnections < 1 || unprovenConnections < 1 || callsPerConnection < 1 || inboundBytesBudget < 1) {
                throw new IllegalArgumentException("store master limits must be >= 1: " + maxConnections + " connections, "
                        + unprovenConnections + " unproven, " + callsPerConnection + " calls per connection, "
                        + inboundBytesBudget + " inbound bytes budget");
            }
        }
    }

    private final StoreMaster master;
    private final Server server;
    private final RpcStats stats;
    private final ExecutorService slowWork;
    private final AuthInterceptor auth;
    private final ConnectionGate gate;
    private final InboundBudget budget;
    private final EventLoopGroup boss;
    private final EventLoopGroup workers;

    private MasterServer(StoreMaster master, Server server, RpcStats stats, ExecutorService slowWork, AuthInterceptor auth,
                         ConnectionGate gate, InboundBudget budget, EventLoopGroup boss, EventLoopGroup workers) {
        this.master = master;
        this.server = server;
        this.stats = stats;
        this.slowWork = slowWork;
        this.auth = auth;
        this.gate = gate;
        this.budget = budget;
        this.boss = boss;
        this.workers = workers;
    }

    /** Starts a master on {@code host:port} (port 0 picks a free one) with housekeeping every {@code tickMillis}. */
    public static MasterServer start(MasterConfig config, StoreClock clock, String host, int port, long tickMillis) throws IOException {
        return start(config, clock, host, port, tickMillis, r -> { });
    }

    /** As above, handing every housekeeping round's report to {@code observer}. */
    public static MasterServer start(MasterConfig config, StoreClock clock, String host, int port, long tickMillis,
                                     java.util.function.Consumer<org.tent4j.store.master.Command.TickReport> observer) throws IOException {
        return start(new StoreMaster(config, clock), host, port, tickMillis, observer);
    }

    /**
     * Serves {@code master} (in memory, or on its durable log) on {@code host:port}; closing the server closes the
     * master.
     */
    public static MasterServer start(StoreMaster master, String host, int port, long tickMillis,
                                     java.util.function.Consumer<org.tent4j.store.master.Command.TickReport> observer) throws IOException {
        return start(master, host, port, tickMillis, observer, StoreSecurity.NONE, ClientCredentials.of(master));
    }

    /**
     * As above, refusing calls without {@code security}'s token (and serving over its TLS), issuing client ids and
     * credentials from {@code credentials}. Without a token the master serves whoever reaches it; on an address
     * that is not loopback it says so in one WARN line.
     */
    public static MasterServer start(StoreMaster master, String host, int port, long tickMillis,
                                     java.util.function.Consumer<org.tent4j.store.master.Command.TickReport> observer,
                                     StoreSecurity security, ClientCredentials credentials) throws IOException {
        return start(master, host, port, tickMillis, observer, security, credentials, null);
    }

    /**
     * As above; with {@code mountProofEngine} every mount must prove its caller wrote the nonce the master handed it
     * at the segment's base, which the master reads back through the engine it supplies before mounting. It is asked
     * for at each memory mount (from the slow-work pool), so it may start its engine at the first one; the caller keeps
     * and closes the engine.
     */
    public static MasterServer start(StoreMaster master, String host, int port, long tickMillis,
                                     java.util.function.Consumer<org.tent4j.store.master.Command.TickReport> observer,
                                     StoreSecurity security, ClientCredentials credentials,
                                     java.util.function.Supplier<org.tent4j.api.TransferEngine> mountProofEngine)
            throws IOException {
        return start(master, host, port, tickMillis, observer, security, credentials, mountProofEngine, Limits.DEFAULT);
    }

    /** As above, within {@code limits}. */
    public static MasterServer start(StoreMaster master, String host, int port, long tickMillis,
                                     java.util.function.Consumer<org.tent4j.store.master.Command.TickReport> observer,
                                     StoreSecurity security, ClientCredentials credentials,
                                     java.util.function.Supplier<org.tent4j.api.TransferEngine> mountProofEngine,
                                     Limits limits) throws IOException {
        RpcStats stats = new RpcStats();
        ExecutorService slowWork = slowWorkPool(SLOW_WORK_THREADS, SLOW_WORK_QUEUE);
        ConnectionGate gate = new ConnectionGate(limits.maxConnections(), limits.unprovenConnections(),
                security.authenticates() || security.tls(), stats);
        AuthInterceptor auth = new AuthInterceptor(security, credentials, stats, gate);
        InboundBudget budget = new InboundBudget(limits.inboundBytesBudget(), stats);
        boolean epoll = Epoll.isAvailable();
        IoHandlerFactory io = epoll ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, daemons("store-master-accept"), io);
        EventLoopGroup workers = new MultiThreadIoEventLoopGroup(Runtime.getRuntime().availableProcessors(),
                daemons("store-master-io"), io);
        Server server;
        try {
            // handlers run on the event loops (MasterService hands its slow work to slowWork): a small RPC then costs
            // two thread hand-offs on the master instead of four
            GrpcLogLimit.install();
            NettyServerBuilder b = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
                    .bossEventLoopGroup(boss)
                    .workerEventLoopGroup(workers)
                    .channelFactory(() -> {
                        ServerChannel ch = epoll ? new EpollServerSocketChannel() : new NioServerSocketChannel();
                        // first on the listener: it sees each accepted connection before gRPC's acceptor does
                        ch.pipeline().addLast(gate);
                        return ch;
                    })
                    .maxConcurrentCallsPerConnection(limits.callsPerConnection())
                    .maxInboundMessageSize(MAX_MESSAGE_BYTES)
                    .flowControlWindow(FLOW_CONTROL_WINDOW)
                    .addStreamTracerFactory(budget)
                    .directExecutor()
                    // interceptors run last-named first: the token check, then the follower's refusal
                    .addService(ServerInterceptors.intercept(new MasterService(master, stats, slowWork, credentials,
                            new MountProof(mountProofEngine, credentials)), new LeaderGate(master.log()), auth));
            if (security.tls()) {
                b.sslContext(StoreTls.server(security));
            }
            server = b.build().start();
        } catch (IOException | RuntimeException e) {
            slowWork.shutdownNow();
            boss.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            master.close();
            throw e;
        }
        MasterServer self = new MasterServer(master, server, stats, slowWork, auth, gate, budget, boss, workers);
        if (tickMillis > 0) {
            master.startHousekeeping(tickMillis, observer);
        }
        LOG.info("store master listening on {}:{} ({}, mount proof {})", host, server.getPort(), security,
                mountProofEngine == null ? "off" : "on");
        if (!security.authenticates() && !isLoopback(host)) {
            LOG.warn("store master on {}:{} has no token: it serves EVERYONE who reaches this address, unauthenticated "
                    + "(anyone can register, put, read and remove objects; forced bulk removal included). Set "
                    + "--token-file (or TENT4J_SECURITY_TOKEN_FILE), or bind 127.0.0.1", host, server.getPort());
        }
        return self;
    }

    /** Whether {@code host} is a loopback address (a name resolving to one included); unresolvable: not. */
    public static boolean isLoopback(String host) {
        try {
            return java.net.InetAddress.getByName(host).isLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            return false;
        }
    }

    /**
     * At most {@code threads} threads (gone when idle) and {@code queue} waiting tasks; {@code execute} beyond that
     * throws {@link java.util.concurrent.RejectedExecutionException}, which {@link MasterService} answers as a refusal.
     */
    private static java.util.concurrent.ThreadFactory daemons(String name) {
        return new io.netty.util.concurrent.DefaultThreadFactory(name, true);
    }

    public static ExecutorService slowWorkPool(int threads, int queue) {
        AtomicInteger made = new AtomicInteger();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(threads, threads, 30, TimeUnit.SECONDS,
                new ArrayBlockingQueue<>(queue), r -> {
                    Thread t = new Thread(r, "store-master-slow-" + made.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                }, new ThreadPoolExecutor.AbortPolicy());
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    public StoreMaster master() {
        return master;
    }

    public RpcStats stats() {
        return stats;
    }

    /** Connections closed because the limit's worth were open (at accept, or on proving themselves). */
    public long refusedConnections() {
        return gate.refused();
    }

    /** Connections that never authenticated, closed to make room for newer ones. */
    public long evictedUnprovenConnections() {
        return gate.evicted();
    }

    /** Connections counted against the limit now. */
    public int openConnections() {
        return gate.open();
    }

    /** Bytes of partly received messages charged to the inbound budget now. */
    public long inboundBytesHeld() {
        return budget.held();
    }

    /** Messages refused because the inbound budget was spent, since start. */
    public long inboundRefused() {
        return budget.refused();
    }

    /** Calls refused for a missing or wrong token since start. */
    public long refusedUnauthenticated() {
        return auth.refused();
    }

    public int port() {
        return server.getPort();
    }

    public void awaitTermination() throws InterruptedException {
        server.awaitTermination();
    }

    @Override
    public void close() {
        master.close();
        server.shutdownNow();
        slowWork.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        boss.shutdownGracefully(0, 0, TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 0, TimeUnit.SECONDS);
    }
}
