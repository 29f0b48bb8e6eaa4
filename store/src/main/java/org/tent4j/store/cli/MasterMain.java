package org.tent4j.store.cli;

import java.util.Set;

import org.tent4j.store.StoreClock;
import org.tent4j.store.admin.AdminServer;
import org.tent4j.store.master.MasterConfig;
import org.tent4j.store.master.Placement;
import org.tent4j.store.rpc.MasterServer;

/**
 * {@code store-master}: runs a store master until killed. Prints {@code LISTENING <rpc port> <admin port>} once
 * serving, and {@code EXPIRED <client id>} whenever a client's segments are dropped for silence (scripts and tests
 * wait on these lines).
 */
public final class MasterMain {
    private MasterMain() {
    }

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = new Options(args, Set.of("host", "port", "admin-port", "lease-ttl", "client-ttl", "placement",
                    "high-watermark", "eviction-ratio", "tick"), Set.of("help"));
        } catch (IllegalArgumentException e) {
            System.err.println("store-master: " + e.getMessage());
            System.exit(2);
            return;
        }
        if (o.flag("help")) {
            System.out.println("""
                    usage: store-master [--host 0.0.0.0] [--port 50051] [--admin-port 9003 (-1: none)]
                                        [--lease-ttl 10s] [--client-ttl 10s] [--placement random|free_ratio_first]
                                        [--high-watermark 0.90] [--eviction-ratio 0.05] [--tick 100ms]""");
            return;
        }
        MasterConfig d = MasterConfig.defaults();
        MasterConfig config = new MasterConfig(o.duration("lease-ttl", d.leaseTtl()), d.defaultSoftPinTtl(), d.maxSoftPinTtl(),
                Double.parseDouble(o.string("high-watermark", "0.90")), Double.parseDouble(o.string("eviction-ratio", "0.05")),
                o.duration("client-ttl", d.clientTtl()), d.putDiscardTimeout(), d.putReleaseTimeout(),
                Placement.valueOf(o.string("placement", "random").toUpperCase(java.util.Locale.ROOT)),
                d.maxKeyBytes(), d.maxReplicas(), d.shards());
        String host = o.string("host", "0.0.0.0");
        MasterServer server = MasterServer.start(config, StoreClock.system(), host, o.integer("port", 50051),
                o.duration("tick", java.time.Duration.ofMillis(100)).toMillis(), r -> {
                    for (String id : r.clientsExpired()) {
                        System.out.println("EXPIRED " + id);
                    }
                });
        int adminPort = o.integer("admin-port", 9003);
        AdminServer admin = adminPort < 0 ? null : AdminServer.start(server, host, adminPort);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (admin != null) {
                admin.close();
            }
            server.close();
        }));
        System.out.println("LISTENING " + server.port() + " " + (admin == null ? -1 : admin.port()));
        System.out.flush();
        server.awaitTermination();
    }
}
