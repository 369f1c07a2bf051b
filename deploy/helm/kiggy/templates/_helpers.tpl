{{/* Names. */}}
{{- define "kiggy.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kiggy.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The headless Service that gives each pod its DNS name (the advertised address). */}}
{{- define "kiggy.headless" -}}
{{- printf "%s-headless" (include "kiggy.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "kiggy.iggySecret" -}}
{{- default (printf "%s-iggy" (include "kiggy.fullname" .)) .Values.iggy.existingSecret }}
{{- end }}

{{- define "kiggy.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kiggy.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "kiggy.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kiggy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* A listener's container port name: lower case, dashes, at most 15 characters. */}}
{{- define "kiggy.portName" -}}
{{- . | lower | replace "_" "-" | trunc 15 | trimSuffix "-" }}
{{- end }}

{{/*
kiggy.check refuses value sets that cannot work, at render time, so that a mistake shows in
`helm install` rather than in a crash-looping pod.
*/}}
{{- define "kiggy.check" -}}
{{- if lt (int .Values.replicaCount) 1 }}
{{- fail "replicaCount must be at least 1" }}
{{- end }}
{{- if not .Values.listeners }}
{{- fail "listeners: give at least one" }}
{{- end }}
{{- $seen := dict }}
{{- range .Values.listeners }}
{{- if not (regexMatch "^[A-Z][A-Z0-9_]*$" (toString .name)) }}
{{- fail (printf "listeners: name %q: upper-case letters, digits and _ (Kafka listener names)" (toString .name)) }}
{{- end }}
{{- if hasKey $seen .name }}
{{- fail (printf "listeners: %s given twice" .name) }}
{{- end }}
{{- $_ := set $seen .name true }}
{{- if not (has .protocol (list "PLAINTEXT" "SSL" "SASL_PLAINTEXT" "SASL_SSL")) }}
{{- fail (printf "listeners: %s: protocol %q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL" .name (toString .protocol)) }}
{{- end }}
{{- if and (has .protocol (list "SSL" "SASL_SSL")) (not $.Values.tls.secret) }}
{{- fail (printf "listeners: %s is %s: set tls.secret (a kubernetes.io/tls Secret)" .name .protocol) }}
{{- end }}
{{- if and (has .protocol (list "SASL_PLAINTEXT" "SASL_SSL")) (not $.Values.sasl.secret) (ne $.Values.sasl.plainVerifier "iggy") }}
{{- fail (printf "listeners: %s is %s: set sasl.secret and its users file keys, or sasl.plainVerifier iggy" .name .protocol) }}
{{- end }}
{{- if or (lt (int .port) 1) (gt (int .port) 65535) (eq (int .port) (int $.Values.admin.port)) }}
{{- fail (printf "listeners: %s: port %v: 1-65535 and not the admin port" .name .port) }}
{{- end }}
{{- end }}
{{- if not (has .Values.iggy.auth (list "password" "token")) }}
{{- fail "iggy.auth: want password or token" }}
{{- end }}
{{- if and (not .Values.iggy.existingSecret) (not .Values.iggy.credentials.addr) }}
{{- fail "iggy: set iggy.existingSecret (a Secret with the Iggy addresses and credentials) or iggy.credentials.addr" }}
{{- end }}
{{- range $k, $v := .Values.config }}
{{- if not (hasPrefix "KIGGY_" $k) }}
{{- fail (printf "config: %s: only KIGGY_* variables" $k) }}
{{- end }}
{{- if has $k (list "KIGGY_IGGY_ADDR" "KIGGY_IGGY_USERNAME" "KIGGY_IGGY_PASSWORD" "KIGGY_IGGY_TOKEN" "KIGGY_NODE_ID" "KIGGY_LISTENERS" "KIGGY_ADVERTISED_LISTENERS" "KIGGY_ADVERTISED_HOST" "KIGGY_ADVERTISED_PORT" "KIGGY_LISTEN" "KIGGY_ADMIN_ADDR" "KIGGY_CLUSTER_MEMBERSHIP" "KIGGY_PEERS" "KIGGY_INSTANCE_ID") }}
{{- fail (printf "config: %s is set by the chart (credentials come from iggy.existingSecret; listeners, node ids and membership from their values)" $k) }}
{{- end }}
{{- end }}
{{- end }}
