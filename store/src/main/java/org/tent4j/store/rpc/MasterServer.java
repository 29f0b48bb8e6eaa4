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

    private final StoreMaster master;
    private final Server server;
    private final RpcStats stats;
    private final ExecutorService slowWork;
    private final AuthInterceptor auth;

    private MasterServer(StoreMaster master, Server server, RpcStats stats, ExecutorService slowWork, AuthInterceptor auth) {
        this.master = master;
        this.server = server;
        this.stats = stats;
        this.slowWork = slowWork;
        this.auth = auth;
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
     * at the segment's base, which the master reads back through that engine before mounting (the caller keeps and
     * closes the engine).
     */
    public static MasterServer start(StoreMaster master, String host, int port, long tickMillis,
                                     java.util.function.Consumer<org.tent4j.store.master.Command.TickReport> observer,
                                     StoreSecurity security, ClientCredentials credentials,
                                     org.tent4j.api.TransferEngine mountProofEngine) throws IOException {
        RpcStats stats = new RpcStats();
        ExecutorService slowWork = slowWorkPool(SLOW_WORK_THREADS, SLOW_WORK_QUEUE);
        AuthInterceptor auth = new AuthInterceptor(security, credentials, stats);
        Server server;
        try {
            // handlers run on the event loops (MasterService hands its slow work to slowWork): a small RPC then costs
            // two thread hand-offs on the master instead of four
            NettyServerBuilder b = NettyServerBuilder.forAddress(new InetSocketAddress(host, port))
                    .maxInboundMessageSize(MAX_MESSAGE_BYTES)
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
            master.close();
            throw e;
        }
        MasterServer self = new MasterServer(master, server, stats, slowWork, auth);
        if (tickMillis > 0) {
            master.startHousekeeping(tickMillis, observer);
        }
        LOG.info("store master listening on {}:{} ({})", host, server.getPort(), security);
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
    }
}
