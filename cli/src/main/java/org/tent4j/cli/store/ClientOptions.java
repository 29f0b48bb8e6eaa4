package org.tent4j.cli.store;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.client.StoreClient;

import picocli.CommandLine.Option;

/** The options of a command that is a store client (node, bench): which master, and how its engine is reached. */
final class ClientOptions {
    @Option(names = "--master", defaultValue = "127.0.0.1:50051", paramLabel = "HOST:PORT",
            description = "The store master's RPC address. Default: ${DEFAULT-VALUE}.")
    String master;

    @Option(names = {"--control-host", "--control_host"}, paramLabel = "ADDRESS",
            description = "The address peers reach this engine at (engine key control.host).")
    String controlHost;

    @Option(names = {"--client-id", "--client_id"}, paramLabel = "ID", description = "This client's id (default: a new one).")
    String clientId;

    /** A new engine, reachable at {@code --control-host} when given. */
    TransferEngine engine() {
        EngineConfig.Builder cfg = EngineConfig.builder();
        if (controlHost != null) {
            cfg.set(EngineConfig.CONTROL_HOST, controlHost);
        }
        return TransferEngine.create(cfg.build());
    }

    /** A client of {@code --master} on {@code engine}, with {@code --client-id} when given; not yet connected. */
    StoreClient.Builder client(TransferEngine engine) {
        StoreClient.Builder b = StoreClient.builder(engine, master);
        if (clientId != null) {
            b.clientId(clientId);
        }
        return b;
    }
}
