package kiggy.ecosystem;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * SeqSourceConnector is a Kafka Connect source connector for kiggy's
 * ecosystem tests (tests/ecosystem): its one task (SeqSourceTask) writes the
 * records key-0/value-0, key-1/value-1, ... up to "count" (exclusive) to
 * partition 0 of "topic", String schemas, and keeps its position as a Connect
 * source offset, so a restarted worker (or a raised count) resumes after the
 * last record whose offset Connect committed.
 */
public final class SeqSourceConnector extends SourceConnector {
    static final String TOPIC = "topic";
    static final String COUNT = "count";
    static final String BATCH = "batch";

    static final ConfigDef CONFIG = new ConfigDef()
        .define(TOPIC, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "topic to write to")
        .define(COUNT, ConfigDef.Type.LONG, ConfigDef.Importance.HIGH, "number of records in all")
        .define(BATCH, ConfigDef.Type.INT, 50, ConfigDef.Importance.LOW, "records per poll");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props); // fail the connector on a bad config
        this.props = props;
    }

    @Override
    public Class<? extends Task> taskClass() {
        return SeqSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> out = new ArrayList<>();
        out.add(props);
        return out;
    }

    @Override
    public void stop() {}

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1";
    }
}
