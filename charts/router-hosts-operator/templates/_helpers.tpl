{{/* The chart's name, or nameOverride. */}}
{{- define "rho.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The name of every object the chart makes, scoped by the release so that two releases never
share a cluster-scoped ClusterRole: fullnameOverride, else the release's name when it already
contains the chart's, else "<release>-<name>".
*/}}
{{- define "rho.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "rho.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "rho.serviceAccountName" -}}
{{- default (include "rho.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "rho.labels" -}}
{{ include "rho.selector" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "rho.selector" -}}
app.kubernetes.io/name: {{ include "rho.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The mTLS Secret the operator may read: the one the RouterHostsConfig names, else the mounted one. */}}
{{- define "rho.secretRef" -}}
{{- $ref := dict "name" .Values.routerHosts.tls.secretName "namespace" .Release.Namespace -}}
{{- with .Values.config.spec.server -}}{{- with .tlsSecretRef -}}{{- $ref = . -}}{{- end -}}{{- end -}}
{{- toJson $ref -}}
{{- end -}}

{{/* The leader Lease's name: the Deployment passes it, and the Role grants it alone. */}}
{{- define "rho.leaseName" -}}
{{- .Values.leaderElection.id | default (include "rho.fullname" .) -}}
{{- end -}}
