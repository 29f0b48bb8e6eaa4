package org.tent4j.store.master;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.List;

import org.tent4j.store.StoreClock;
import org.tent4j.store.admin.AdminServer;
import org.tent4j.store.rpc.MasterServer;

/**
 * A master on its durable log in a child JVM: {@code <data dir> <port> [<id> <peers>]} (a group of one as {@code m1}
 * without peers; {@code --peers}' form with them); prints {@code LISTENING <port> <admin port>} once it serves (a
 * follower: once it knows a leader) and runs until {@code EXIT} on stdin, or until it is killed, which is what
 * {@link DurableMasterKillTest} and {@link DeposedLeaderTest} do.
 */
public final class DurableMasterProcess {
    private DurableMasterProcess() {
    }

    public static void main(String[] args) throws Exception {
        String id = args.length > 2 ? args[2] : "m1";
        List<MasterPeer> peers = args.length > 3 ? MasterPeer.parse(args[3]) : List.of();
        DurableLog log = DurableLog.open(MasterConfig.defaults(), Path.of(args[0]), id, peers,
                new DurableLog.Settings(1_000_000, false, 60_000));
        try (MasterServer server = MasterServer.start(new StoreMaster(log, StoreClock.system()), "127.0.0.1",
                Integer.parseInt(args[1]), 0, r -> { });
             AdminServer admin = AdminServer.start(server, "127.0.0.1", 0)) {
            System.out.println("LISTENING " + server.port() + " " + admin.port());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null && !line.equals("EXIT"); ) {
                // commands other than EXIT are not expected
            }
        }
    }
}
