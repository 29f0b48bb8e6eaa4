package org.tent4j.store.master;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.List;

import org.tent4j.store.StoreClock;
import org.tent4j.store.rpc.MasterServer;

/**
 * A master on its durable log in a child JVM: {@code <data dir> <port>}; prints {@code LISTENING <port>} once it
 * serves and runs until {@code EXIT} on stdin, or until it is killed, which is what {@link DurableMasterKillTest} does.
 */
public final class DurableMasterProcess {
    private DurableMasterProcess() {
    }

    public static void main(String[] args) throws Exception {
        DurableLog log = DurableLog.open(MasterConfig.defaults(), Path.of(args[0]), "m1", List.of(),
                new DurableLog.Settings(1_000_000, false, 60_000));
        try (MasterServer server = MasterServer.start(new StoreMaster(log, StoreClock.system()), "127.0.0.1",
                Integer.parseInt(args[1]), 0, r -> { })) {
            System.out.println("LISTENING " + server.port());
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
            for (String line; (line = in.readLine()) != null && !line.equals("EXIT"); ) {
                // commands other than EXIT are not expected
            }
        }
    }
}
