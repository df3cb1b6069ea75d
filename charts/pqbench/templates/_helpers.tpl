{{/*
The chart name ("pqbench" unless nameOverride).
*/}}
{{- define "pqbench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The prefix of every object's name: <release>-pqbench-operator, or <release>-operator when
the release name already contains the chart name.
*/}}
{{- define "pqbench.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "pqbench.name" . }}
{{- if contains $name .Release.Name }}
{{- printf "%s-operator" .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s-operator" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The namespaces whose campaigns the operator runs (a JSON list): watchNamespaces, or the
release namespace. Not used with clusterWide.
*/}}
{{- define "pqbench.watchNamespaces" -}}
{{- default (list .Release.Namespace) .Values.watchNamespaces | uniq | toJson }}
{{- end }}

{{/*
Chart label value.
*/}}
{{- define "pqbench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels of the operator pod. app.kubernetes.io/name is fixed: the operator and the
NetworkPolicies of campaign namespaces recognise the operator by it.
*/}}
{{- define "pqbench.selectorLabels" -}}
app.kubernetes.io/name: pqbench-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
Labels of every object of the chart.
*/}}
{{- define "pqbench.labels" -}}
helm.sh/chart: {{ include "pqbench.chart" . }}
{{ include "pqbench.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: pqbench
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The ServiceAccount the operator runs as.
*/}}
{{- define "pqbench.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pqbench.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
An image reference from {repository, tag, digest}: the digest wins, the tag defaults to the
chart's appVersion. Call with (dict "image" .Values.image "root" .).
*/}}
{{- define "pqbench.image" -}}
{{- $image := .image }}
{{- if $image.digest }}
{{- printf "%s@%s" $image.repository $image.digest }}
{{- else }}
{{- printf "%s:%s" $image.repository (default .root.Chart.AppVersion $image.tag) }}
{{- end }}
{{- end }}

{{/*
Namespace of the ServiceMonitor.
*/}}
{{- define "pqbench.serviceMonitorNamespace" -}}
{{- default .Release.Namespace .Values.serviceMonitor.namespace }}
{{- end }}
