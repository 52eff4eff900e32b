{{/* The name of every object the chart makes; fullnameOverride replaces it. */}}
{{- define "rho.fullname" -}}
{{- default "router-hosts-operator" .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "rho.labels" -}}
app.kubernetes.io/name: router-hosts-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "rho.selector" -}}
app.kubernetes.io/name: router-hosts-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The mTLS Secret the operator may read: the one the RouterHostsConfig names, else the mounted one. */}}
{{- define "rho.secretRef" -}}
{{- $ref := dict "name" .Values.routerHosts.tls.secretName "namespace" .Release.Namespace -}}
{{- with .Values.config.spec.server -}}{{- with .tlsSecretRef -}}{{- $ref = . -}}{{- end -}}{{- end -}}
{{- toJson $ref -}}
{{- end -}}
