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

{{/* The image: repository@digest when a digest is set (it pins the image, whatever the tag),
else repository:tag, the tag defaulting to the chart's own release. */}}
{{- define "rho.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default (printf "v%s" .Chart.AppVersion)) -}}
{{- end -}}
{{- end -}}

{{/* imagePullSecrets and an umbrella chart's global.imagePullSecrets (names or {name: ...}),
as a JSON list of {name: ...} without repeats. */}}
{{- define "rho.imagePullSecrets" -}}
{{- $out := list -}}
{{- $global := list -}}
{{- with .Values.global }}{{ $global = .imagePullSecrets | default list }}{{ end -}}
{{- range concat .Values.imagePullSecrets $global -}}
{{- $s := . -}}
{{- if kindIs "string" . }}{{ $s = dict "name" . }}{{ end -}}
{{- if not (has $s $out) }}{{ $out = append $out $s }}{{ end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* The source kinds the operator runs, a name that stands for others (gateway) replaced by
those, from the table make generate writes from source/kinds.go (_sources.tpl). */}}
{{- define "rho.sources" -}}
{{- $table := include "rho.sourceTable" . | fromJson -}}
{{- $out := list -}}
{{- range .Values.sources -}}
{{- $standsFor := get (get $table . | default dict) "standsFor" -}}
{{- if $standsFor }}{{ $out = concat $out $standsFor }}{{ else }}{{ $out = append $out . }}{{ end -}}
{{- end -}}
{{- toJson (uniq $out) -}}
{{- end -}}

{{/*
The rules the enabled sources declare (source/kinds.go, through _sources.tpl), as JSON
{"local": [...], "everywhere": [...]}, repeats dropped: local rules are on the sources' own
objects, granted where the operator watches (by the ClusterRole, or with watchNamespace by a
Role there); everywhere rules are on what a source reads in every namespace whatever is watched
(a route's Gateways, which routes name across namespaces), always by the ClusterRole.
*/}}
{{- define "rho.sourceRules" -}}
{{- $table := include "rho.sourceTable" . | fromJson -}}
{{- $local := list -}}
{{- $everywhere := list -}}
{{- range include "rho.sources" . | fromJsonArray -}}
{{- range get (get $table . | default dict) "rules" | default list -}}
{{- $r := dict "apiGroups" .apiGroups "resources" .resources "verbs" .verbs -}}
{{- if get . "everywhere" }}{{ $everywhere = append $everywhere $r }}{{ else }}{{ $local = append $local $r }}{{ end -}}
{{- end -}}
{{- end -}}
{{- toJson (dict "local" (uniq $local) "everywhere" (uniq $everywhere)) -}}
{{- end -}}

{{/* The source rules the ClusterRole grants, as a JSON list: the local ones too unless
watchNamespace moves them to a Role. */}}
{{- define "rho.clusterSourceRules" -}}
{{- $r := include "rho.sourceRules" . | fromJson -}}
{{- if .Values.watchNamespace -}}
{{- toJson $r.everywhere -}}
{{- else -}}
{{- toJson (concat $r.local $r.everywhere | uniq) -}}
{{- end -}}
{{- end -}}

{{/* "true" when a list of the sources' rules (the first of the arguments) grants a verb (the
fourth) on a resource (the third) of an API group (the second). */}}
{{- define "rho.grants" -}}
{{- $args := . -}}
{{- range index $args 0 -}}
{{- if and (has (index $args 1) .apiGroups) (has (index $args 2) .resources) (has (index $args 3) .verbs) }}true{{ end -}}
{{- end -}}
{{- end -}}

{{/* Rules as a Role writes them, one item each. */}}
{{- define "rho.rules" -}}
{{- range . }}
- apiGroups: {{ include "rho.flowList" .apiGroups }}
  resources: {{ include "rho.flowList" .resources }}
  verbs: {{ include "rho.flowList" .verbs }}
{{- end }}
{{- end -}}

{{/* A list of strings in flow style, ["a", "b"], as the chart writes its rules. */}}
{{- define "rho.flowList" -}}
[{{ range $i, $v := . }}{{ if $i }}, {{ end }}{{ $v | quote }}{{ end }}]
{{- end -}}

{{/*
The Services an --ip-resolution step names (service:<namespace>/<name> in ipResolution, a
Service or IngressController step of config.spec.ipResolution, and rbac.ipResolutionServices),
as a JSON map of namespace to names. The operator watches each by its name alone.
*/}}
{{- define "rho.resolutionServices" -}}
{{- $refs := list -}}
{{- range .Values.ipResolution -}}
{{- if hasPrefix "service:" . }}{{ $refs = append $refs (trimPrefix "service:" .) }}{{ end -}}
{{- end -}}
{{- if .Values.config.create -}}
{{- range .Values.config.spec.ipResolution | default list -}}
{{- if and (has .type (list "Service" "IngressController")) .serviceNamespace .serviceName -}}
{{- $refs = append $refs (printf "%s/%s" .serviceNamespace .serviceName) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $refs = concat $refs .Values.rbac.ipResolutionServices -}}
{{- $out := dict -}}
{{- range $refs -}}
{{- $parts := splitList "/" . -}}
{{- $ns := index $parts 0 -}}
{{- $names := get $out $ns | default list -}}
{{- $_ := set $out $ns (append $names (index $parts 1) | uniq) -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}
