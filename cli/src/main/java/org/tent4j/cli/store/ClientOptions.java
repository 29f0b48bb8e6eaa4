package org.tent4j.cli.store;

import java.nio.file.Path;

import org.tent4j.api.EngineConfig;
import org.tent4j.api.TransferEngine;
import org.tent4j.store.client.StoreClient;

import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The options of a command that is a store client (node, bench): which master, how its engine is reached, and the
 * token and TLS both use.
 */
final class ClientOptions {
    @Option(names = "--master", defaultValue = "127.0.0.1:50051", paramLabel = "HOST:PORT[,HOST:PORT...]",
            description = "The store master's RPC address, or every master of a group separated by commas: calls go "
                    + "to the leader, followed when it changes. Default: ${DEFAULT-VALUE}.")
    String master;

    @Option(names = {"--control-host", "--control_host"}, paramLabel = "ADDRESS",
            description = "The address peers reach this engine at (engine key control.host).")
    String controlHost;

    @Option(names = "--config", paramLabel = "FILE",
            description = "Engine config file (.json or .properties), below these options and above the defaults; e.g. "
                    + "transports.nvmeof.peer_roots so a client reads a node's disk on this host through nvmeof.")
    Path configFile;

    @Mixin
    SecurityOptions security;

    /**
     * A new engine from {@code --config} when given, reachable at {@code --control-host} when given, secured by the same
     * token and TLS as the store calls.
     */
    TransferEngine engine() {
        EngineConfig.Builder cfg = EngineConfig.builder();
        if (configFile != null) {
            cfg.file(configFile);
        }
        if (controlHost != null) {
            cfg.set(EngineConfig.CONTROL_HOST, controlHost);
        }
        security.applyTo(cfg);
        return TransferEngine.create(cfg.build());
    }

    /**
     * A client of {@code --master} on {@code engine}, proving the token; not yet connected (the master issues its id
     * when it does).
     */
    StoreClient.Builder client(TransferEngine engine) {
        return StoreClient.builder(engine, master).security(security.security(System.getenv()));
    }
}
