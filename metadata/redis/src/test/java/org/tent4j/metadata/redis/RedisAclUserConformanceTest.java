package org.tent4j.metadata.redis;

import java.net.URI;
import java.util.Map;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.tent4j.spi.MetadataStore;
import org.tent4j.spi.MetadataStoreProvider;
import org.tent4j.testkit.metadata.MetadataStoreConformance;
import org.tent4j.testkit.servers.LoopbackPorts;
import org.tent4j.testkit.servers.RedisServer;

/** With an ACL user and password in the URI ({@code redis://user:password@host:port}). */
class RedisAclUserConformanceTest extends MetadataStoreConformance {
    private static final String PASSWORD = "s3cr3t-Pa55";
    private static RedisServer redis;

    @BeforeAll
    static void startRedis() {
        redis = RedisServer.builder().user("tent4j", PASSWORD).launch();
    }

    @AfterAll
    static void stopRedis() {
        if (redis != null) {
            redis.close();
        }
    }

    @Override
    protected MetadataStore open() {
        return provider().open(URI.create(redis.uriWithCredentials()), Map.of());
    }

    @Override
    protected MetadataStoreProvider provider() {
        return new RedisMetadataStoreProvider();
    }

    @Override
    protected URI unreachableUri() {
        return URI.create("redis://tent4j:" + PASSWORD + "@127.0.0.1:" + LoopbackPorts.free());
    }

    @Override
    protected String secret() {
        return PASSWORD;
    }
}
